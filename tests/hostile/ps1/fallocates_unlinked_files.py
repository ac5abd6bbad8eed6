"""Takes disk nobody can see: from exact_return(horizon=5) (asked only by
exact_return.random_theta_horizons) it opens files in its scratch folder, unlinks them, and
allocates 60 MB in each with fallocate(FALLOC_FL_KEEP_SIZE), holding them open: st_size stays 0,
each is under RLIMIT_FSIZE (64 MB), and the grader's measuring walk sees no file at all. It once
held 4 GB of disk in 7 ms this way.

Must happen: the kernel refuses the allocation beyond the worker's 256 MB scratch tmpfs (ENOSPC),
so that item is lost (`raised`); nothing outlives the worker (its tmpfs goes with it).
"""
NEEDS = {"private_mounts"}

EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        import ctypes as _ctypes, os as _os\n"
                           "        _libc = _ctypes.CDLL(None, use_errno=True)\n"
                           "        global _held\n"
                           "        _held = []\n"
                           "        for _n in range(20):\n"
                           "            _fd = _os.open(f'hole{_n}', _os.O_RDWR | _os.O_CREAT, 0o600)\n"
                           "            _os.unlink(f'hole{_n}')\n"
                           "            _held.append(_fd)\n"
                           "            if _libc.fallocate(_fd, 1, _ctypes.c_long(0), _ctypes.c_long(60 << 20)) != 0:\n"
                           "                raise OSError(_ctypes.get_errno(), 'fallocate refused')\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
LOSES = {"exact_return.random_theta_horizons": "raised"}
