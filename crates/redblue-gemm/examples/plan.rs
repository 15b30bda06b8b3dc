//! The plan convention for the multiplication, as the book's GEMM page shows it: plan before
//! anything is allocated, read what the plan tells, run it, and measure what it said.

use redblue_comm::{run_ranks, Communicator};
use redblue_core::Op;
use redblue_dist::OwnedDistMatrix;
use redblue_gemm::{gemm_with, GemmParams, GemmPlan, GemmShape};
use redblue_kernels::Par;

fn main() {
    // ANCHOR: plan
    // C (600 × 400) = A · Bᵀ with A 600 × 800 and B 400 × 800, on 8 ranks, each holding at
    // most 300,000 elements.
    let shape = GemmShape::new(600, 400, 800);
    let ops = (Op::NoTrans, Op::Trans);
    let options = GemmParams::default().with_memory_words(300_000);
    let plan = GemmPlan::new(shape, ops, 8, &options).expect("a plan within the memory");
    // cosma sk2,pk2,pm2,pn2 for 600×400×800 (op(A) = N, op(B) = T) on 8 of 8 ranks: two
    // sequential k parts keep the busiest rank at 2,320,000 bytes (3,120,000 without a limit).
    println!("{plan}");
    println!("the busiest rank needs {} bytes", plan.memory_bytes(8));
    let costs = plan.rank_costs(8); // every rank's words, bytes, messages, sent and received
                                    // ANCHOR_END: plan

    // ANCHOR: run
    let measured = run_ranks(8, |comm| {
        let [la, lb, lc] = plan.native_layouts().expect("the plan's layouts");
        let a = OwnedDistMatrix::<f64, _>::random(&comm, la, 1).expect("A");
        let b = OwnedDistMatrix::<f64, _>::random(&comm, lb, 2).expect("B");
        let mut c = OwnedDistMatrix::zeros(&comm, lc).expect("C");
        comm.reset_stats();
        gemm_with(&comm, &plan, 1.0, &a, &b, 0.0, &mut c, Par::Seq).expect("the product");
        comm.stats()
    });
    // In the native layouts every rank moved exactly what the plan said.
    assert_eq!(measured, costs);
    // ANCHOR_END: run
    println!("measured = planned on all {} ranks", measured.len());
}
