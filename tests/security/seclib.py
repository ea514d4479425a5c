# SPDX-License-Identifier: MIT
"""Helpers of the security tests: root checks, running as nobody."""
import os
import pwd
import shutil
import subprocess
import sys


def skip_all(why):
    print('1..0 # SKIP ' + why)
    sys.exit(0)


def need_root_and_nobody():
    """Skip unless we are root and can become nobody (setpriv/runuser)."""
    if os.geteuid() != 0:
        skip_all('not root: the attacks are by nobody against root')
    try:
        pwd.getpwnam('nobody')
    except KeyError:
        skip_all('no user nobody')
    if not (shutil.which('setpriv') or shutil.which('runuser')):
        skip_all('neither setpriv nor runuser is installed')


def nobody_uid():
    return pwd.getpwnam('nobody').pw_uid


def nobody_argv(argv):
    if shutil.which('setpriv'):
        return ['setpriv', '--reuid=nobody', '--regid=nogroup',
                '--clear-groups'] + list(argv)
    return ['runuser', '-u', 'nobody', '--'] + list(argv)


def as_nobody(argv, **kw):
    kw.setdefault('capture_output', True)
    kw.setdefault('timeout', 120)
    return subprocess.run(nobody_argv(argv), **kw)


def nobody_python():
    """An interpreter nobody can run: the system's (root's own may live
    under /root, which nobody cannot enter)."""
    for p in ('/usr/bin/python3', sys.executable):
        if os.access(p, os.X_OK) and \
                not os.path.realpath(p).startswith('/root/'):
            return p
    return sys.executable


def nobody_py(code, *args, **kw):
    """Run Python @code as nobody; returns the CompletedProcess (text)."""
    kw.setdefault('text', True)
    return as_nobody([nobody_python(), '-c', code] + [str(a) for a in args],
                     **kw)


def starttime(pid):
    with open('/proc/%d/stat' % pid) as f:
        s = f.read()
    return int(s[s.rindex(')') + 2:].split()[19])


def reg_name(pid):
    return '%d-%d' % (pid, starttime(pid))


def run(argv, **kw):
    kw.setdefault('capture_output', True)
    kw.setdefault('timeout', 300)
    return subprocess.run(argv, **kw)


def sanitizer_report(text):
    if isinstance(text, bytes):
        text = text.decode('utf-8', 'replace')
    return 'AddressSanitizer' in text or 'runtime error:' in text or \
        'LeakSanitizer' in text


def env_without(*names, **extra):
    e = dict(os.environ)
    for n in names:
        e.pop(n, None)
    e.update(extra)
    return e


def read(path):
    with open(path, 'rb') as f:
        return f.read()
