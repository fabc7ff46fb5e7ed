//! What retries compounding across a call graph's layers put on each layer, in closed
//! form (docs/call-graphs.md, "Closed forms"), for a uniform chain: every layer makes up
//! to `n` attempts per call, with no budget, no deadline and no capacity limit, and only
//! the bottom fails, each request independently with probability `p`.
//!
//! It is here, beside [`crate::Hop`], so that the simulator's tests and the socket tests
//! hold their runs to one formula rather than to a copy each.

/// Expected attempts per call at each of `layers` layers, edge first, over a bottom that
/// fails each request with probability `p`.
///
/// A call fails when all of its `n` attempts fail, each with the probability `q` that a
/// call to the layer below fails, so it makes `(1 − qⁿ)/(1 − q)` attempts on average
/// (`n` when `q` is 1) and fails with probability `qⁿ`; worked from the bottom up, where
/// `q = p`.
pub fn attempts_per_call(layers: usize, n: u32, p: f64) -> Vec<f64> {
    let mut q = p;
    let mut out = Vec::with_capacity(layers);
    for _ in 0..layers {
        let all_fail = q.powi(n as i32);
        out.push(if q >= 1.0 {
            f64::from(n)
        } else {
            (1.0 - all_fail) / (1.0 - q)
        });
        q = all_fail;
    }
    out.reverse();
    out
}

/// Expected requests per edge request received by each layer below the edge, in the
/// order of a report's `hops` (the hops, then the bottom): the running product of
/// [`attempts_per_call`]. With `p = 1` the bottom's is `n^layers`.
pub fn requests_per_edge_request(layers: usize, n: u32, p: f64) -> Vec<f64> {
    let mut product = 1.0;
    attempts_per_call(layers, n, p)
        .into_iter()
        .map(|e| {
            product *= e;
            product
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_bottom_takes_n_to_the_layers() {
        assert_eq!(requests_per_edge_request(3, 3, 1.0), [3.0, 9.0, 27.0]);
        assert_eq!(requests_per_edge_request(3, 4, 1.0)[2], 64.0);
    }

    #[test]
    fn three_layers_of_three_at_p_0_3_as_the_docs_say() {
        let e = attempts_per_call(3, 3, 0.3);
        assert!((e[2] - 1.39).abs() < 1e-12, "{e:?}");
        let q = 0.3_f64.powi(3);
        assert!((e[1] - (1.0 + q + q * q)).abs() < 1e-12, "{e:?}");
        let bottom = requests_per_edge_request(3, 3, 0.3)[2];
        assert!((bottom - 1.43).abs() < 0.005, "{bottom}");
    }

    #[test]
    fn a_healthy_bottom_takes_one_per_edge_request() {
        assert_eq!(requests_per_edge_request(4, 2, 0.0), [1.0; 4]);
    }
}
