// SPDX-License-Identifier: MIT
// An index out of bounds with panic=abort: the panic message, then abort().
#[inline(never)]
fn lookup(v: &[u32], i: usize) -> u32 {
    v[i]
}

fn main() {
    let v = vec![1, 2, 3];
    let n = std::env::args().count() + 4;
    println!("{}", lookup(&v, 1));
    println!("{}", lookup(&v, n));
}
