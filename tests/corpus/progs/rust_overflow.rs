// SPDX-License-Identifier: MIT
// Unbounded recursion: Rust's own SIGSEGV handler on a sigaltstack prints
// "has overflowed its stack" and aborts.
#[inline(never)]
fn depth(n: u64, buf: &mut [u8; 64]) -> u64 {
    let mut local = [0u8; 256];
    local[(n % 256) as usize] = buf[(n % 64) as usize];
    buf[(n % 64) as usize] = local[((n + 1) % 256) as usize];
    depth(n + 1, buf) + local[(n % 7) as usize] as u64
}

fn main() {
    let mut b = [1u8; 64];
    println!("recursing");
    println!("{}", depth(0, &mut b));
}
