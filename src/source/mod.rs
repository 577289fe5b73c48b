//! Bytes from log files to lines: whole-file reading and live following.
