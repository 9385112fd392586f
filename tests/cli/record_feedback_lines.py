#!/usr/bin/env python3
"""A stimulus-side client for the end-to-end checks: connects to the feedback TCP port, creates READY_FILE once
connected (the sender waits for it), and writes the first N JSON lines it receives to OUT (each checked to parse),
flushing after each. Exits when N lines arrived or the server closed the connection.

  record_feedback_lines.py PORT OUT READY_FILE N"""
import json
import socket
import sys

port, out, ready, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
s = socket.create_connection(("127.0.0.1", port))
open(ready, "w").close()
buf, count = b"", 0
with open(out, "w") as f:
    while count < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf and count < n:
            line, buf = buf.split(b"\n", 1)
            if line.strip():
                json.loads(line)
                f.write(line.decode() + "\n")
                f.flush()
                count += 1
