//! The extender's one integration binary: decision equivalence with the simulator, the HTTP
//! service (shapes, bad input, metrics, preempt), and a bounded load test.

mod equivalence;
mod http;
mod listen;
mod load;
