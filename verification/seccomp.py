"""The seccomp filter of every process in the box (bubblewrap loads it: ``--seccomp FD``).

Everything is allowed but what a test, an app's build or a browser has no use for and an attacker
in the box would start from: new namespaces (a nested user namespace hands its creator every
capability inside it: mounts, raw sockets, …), mounts, tracing other processes, the kernel
keyring, BPF, perf, kernel modules and the like. They fail with EPERM, so programs that probe for
them (Chromium, runtimes) take their fallback. ``clone3`` passes its flags in memory a filter
cannot read: it fails with ENOSYS, which makes the C library use ``clone``, whose flags are
checked (the same choice as Docker's default profile,
https://github.com/moby/moby/blob/master/profiles/seccomp/default.json). ``io_uring`` runs
operations outside the filter's sight: ENOSYS too (Node's libuv falls back to threads).

Built with libseccomp (through ``pyseccomp``, https://pypi.org/project/pyseccomp/) for the
worker's architecture, once per process.
"""

from __future__ import annotations

import errno
import functools
import os

import pyseccomp as sc

# https://man7.org/linux/man-pages/man2/clone.2.html: every CLONE_NEW* flag (CLONE_NEWTIME too)
CLONE_NEW = {
    "CLONE_NEWTIME": 0x00000080,
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
REFUSED = (
    # namespaces and mounts
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    # other processes and the kernel
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "lookup_dcookie",
    "name_to_handle_at",
    "open_by_handle_at",
)
UNIMPLEMENTED = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register")


def _filter() -> sc.SyscallFilter:
    rules = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in REFUSED:
        rules.add_rule(sc.ERRNO(errno.EPERM), name)
    for name in UNIMPLEMENTED:
        rules.add_rule(sc.ERRNO(errno.ENOSYS), name)
    for flag in CLONE_NEW.values():
        # clone(flags, …) on x86-64 and arm64 alike: the flags are the first argument
        rules.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        rules.add_rule(sc.ERRNO(errno.EPERM), "unshare", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    return rules


@functools.cache
def program() -> bytes:
    """The compiled BPF program (what ``bwrap --seccomp`` reads)."""
    with os.fdopen(os.memfd_create("amtp-seccomp", os.MFD_CLOEXEC), "w+b") as out:
        _filter().export_bpf(out)
        out.seek(0)
        return out.read()


def memfd() -> int:
    """A file descriptor holding the program, positioned at its start (the caller closes it)."""
    fd = os.memfd_create("amtp-seccomp", os.MFD_CLOEXEC)
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
