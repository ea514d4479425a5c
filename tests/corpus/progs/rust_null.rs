// SPDX-License-Identifier: MIT
// A write through a null raw pointer in safe-looking code.
use std::ptr;

#[inline(never)]
fn store(slot: *mut u64, v: u64) {
    unsafe { ptr::write_volatile(slot, v) }
}

fn main() {
    let mut a: u64 = 0;
    let slots: [*mut u64; 2] = [&mut a, ptr::null_mut()];
    for (i, s) in slots.iter().enumerate() {
        println!("slot {}", i);
        store(*s, i as u64);
    }
}
