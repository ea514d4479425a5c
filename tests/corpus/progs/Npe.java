// SPDX-License-Identifier: MIT
// NullPointerExceptions caught in a hot loop: the JVM's compiled code
// takes SIGSEGV for its implicit null checks; the program exits 0.
public class Npe {
    static int[] pick(int i) {
        return (i % 3 == 0) ? null : new int[] {i};
    }

    public static void main(String[] args) {
        int caught = 0;
        long sum = 0;
        for (int i = 0; i < 30000; i++) {
            try {
                sum += pick(i)[0];
            } catch (NullPointerException e) {
                caught++;
            }
        }
        System.out.println("caught " + caught + " sum " + sum);
    }
}
