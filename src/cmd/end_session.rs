//! `endSession`: removes every item of a session and its record, at once. Idempotent.

use serde::Serialize;

use super::{Context, session_id};
use crate::cleanup;
use crate::error::CacheError;
use crate::message::Fields;

/// A parsed `endSession`.
pub struct EndSession {
    session_id: String,
}

/// `endSession`'s result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndResult {
    session_id: String,
    #[serde(flatten)]
    removed: cleanup::Removed,
}

impl EndSession {
    /// Checks the session id.
    pub fn parse(fields: &Fields<'_>) -> Result<EndSession, CacheError> {
        Ok(EndSession { session_id: session_id(fields)? })
    }

    /// Runs the cleanup; see `cleanup` for how it survives a crash part-way.
    pub fn apply(self, ctx: &Context) -> Result<EndResult, CacheError> {
        let removed = cleanup::end_session(ctx.store()?, &ctx.origin, &self.session_id)?;
        Ok(EndResult { session_id: self.session_id, removed })
    }
}
