//! Virtual servers (`mode: virtual`): many MCP servers, the members, behind one endpoint. This
//! module holds what does not move bytes: how members expose their names and how an exposed
//! name leads back to its member (`names.rs`), the opaque cursor that pages through every member
//! at once (`cursor.rs`), and the merging of members' list answers (`merge.rs`).
// The virtual route that uses these lands with the proxy's dispatch (issue 33); until then the
// module is built and tested on its own.

pub(crate) mod budget;
pub(crate) mod cursor;
pub(crate) mod merge;
pub(crate) mod names;
