//! Cholesky factorisation `A = L·Lᴴ`: COnfCHOX (2.5D, seed 000 §1.5) and the 2D baseline on the
//! shared tile pipeline, and seed 002's sequential communication-optimal algorithms with the
//! two-level memory simulator that counts what they move ([`sequential`]).

pub mod sequential;
