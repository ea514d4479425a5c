// SPDX-License-Identifier: MIT
// sun.misc.Unsafe reads address 8: the JVM's handler writes hs_err and
// aborts (fault SIGSEGV, death SIGABRT).
import java.lang.reflect.Field;

public class Unsafe {
    static long peek(sun.misc.Unsafe u, long addr) {
        return u.getLong(addr);
    }

    public static void main(String[] args) throws Exception {
        Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
        f.setAccessible(true);
        sun.misc.Unsafe u = (sun.misc.Unsafe) f.get(null);
        System.out.println("peeking");
        System.out.flush();
        System.out.println(peek(u, 8L));
    }
}
