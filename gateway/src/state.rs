//! Everything built from one config: router, pools. Swapped whole on reload.

use crate::config::Config;
use crate::routing::Router;
use crate::upstream::Pool;
use std::sync::Arc;

/// The running configuration, compiled.
#[derive(Debug)]
pub struct State {
    /// The validated config it was built from.
    pub config: Config,
    /// Compiled routes.
    pub router: Router,
    /// Pools, indexed as in `config.pools`.
    pub pools: Vec<Arc<Pool>>,
}

impl State {
    /// Compiles a validated config.
    pub fn new(config: Config) -> State {
        State {
            router: Router::new(&config),
            pools: config
                .pools
                .iter()
                .map(|p| Arc::new(Pool::new(p)))
                .collect(),
            config,
        }
    }
}
