# The golden suite is run by make_golden.py with its own rootdir, never collected here.
collect_ignore = ["suite"]
