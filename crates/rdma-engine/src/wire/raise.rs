//! Where the wire's anomalies are raised: through the engine's findings
//! collector, with the wire as their origin.

use crate::keys::{ConnId, Origin};
use crate::{checks, findings, Engine, Finding, Kind};

impl Engine {
    pub(crate) fn anomaly(
        &mut self,
        out: &mut Vec<Finding>,
        kind: Kind,
        frames: Vec<u64>,
        conn: Option<ConnId>,
        xid: Option<u32>,
        message: String,
    ) {
        let about = findings::About {
            frames,
            connection: conn,
            xid,
            at: None,
        };
        let f = self
            .findings
            .anomaly(&mut self.state, (kind, Origin::Wire), about, message);
        out.push(f);
    }

    /// Raises what a check found, on the frames, connection and XID it
    /// is about.
    pub(crate) fn raise(
        &mut self,
        out: &mut Vec<Finding>,
        v: checks::Violation,
        frames: Vec<u64>,
        conn: Option<ConnId>,
        xid: Option<u32>,
    ) {
        self.anomaly(out, v.kind, frames, conn, xid, v.message);
    }

    /// Raises what a check found, with all it is about.
    pub(crate) fn raise_about(
        &mut self,
        out: &mut Vec<Finding>,
        v: checks::Violation,
        about: findings::About,
    ) {
        let f = self
            .findings
            .anomaly(&mut self.state, (v.kind, Origin::Wire), about, v.message);
        out.push(f);
    }
}
