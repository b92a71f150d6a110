#!/bin/bash
exec bash "$LAB_HOOK_DIR/start.sh" "$@"
