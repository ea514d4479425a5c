// SPDX-License-Identifier: MIT
// A nil map entry dereferenced: Go's runtime takes the SIGSEGV and panics.
// With GOTRACEBACK=crash it then dies of SIGABRT; by default it exits 2.
package main

import "fmt"

type account struct{ balance int }

//go:noinline
func withdraw(a *account, n int) int {
	a.balance -= n
	return a.balance
}

func main() {
	accts := map[string]*account{"alice": {balance: 10}}
	fmt.Println(withdraw(accts["alice"], 3))
	fmt.Println(withdraw(accts["bob"], 3))
}
