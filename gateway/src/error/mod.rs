//! The one place where gateway errors become HTTP answers: every error the gateway generates
//! is a JSON-RPC error object carrying the request's id, a documented code, a message a person
//! understands and a `data` object with machine-readable details.

mod constructors;
mod fail;
mod gateway_error;
mod http;
mod kind;

pub(crate) use fail::Fail;
pub use gateway_error::GatewayError;
pub use kind::ErrorKind;

#[cfg(test)]
mod tests;
