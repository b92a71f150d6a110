#!/bin/bash
exec bash "$LAB_HOOK_DIR/stop.sh" "$@"
