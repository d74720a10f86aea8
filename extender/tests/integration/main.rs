//! The extender's one integration binary: decision equivalence with the simulator, the HTTP
//! service (shapes, bad input, metrics, preempt), hostile clients (auth, caps, timeouts,
//! SIGTERM), and a bounded load test.

mod equivalence;
mod hostile;
mod http;
mod listen;
mod load;
