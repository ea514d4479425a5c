// SPDX-License-Identifier: MIT
// A Go program that calls into C-like code through a raw pointer of a
// non-Go address: the runtime reports "unexpected fault address" and,
// with GOTRACEBACK=crash, dies of SIGABRT.
package main

import (
	"fmt"
	"unsafe"
)

//go:noinline
func peek(addr uintptr) byte {
	return *(*byte)(unsafe.Pointer(addr))
}

func main() {
	fmt.Println("peeking")
	fmt.Println(peek(0x7e0000001000))
}
