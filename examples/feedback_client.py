#!/usr/bin/env python3
"""Print rtfmri's per-TR feedback as a stimulus script would receive it (Python standard library only).

TCP (default): connects to `rtfmri run`'s feedback server, reads one JSON object per line, and prints the volume,
the feedback value and the end-to-end latency. Reconnects when the server restarts. UDP: listens for datagrams
(`rtfmri run --feedback-udp HOST:PORT` sends one per TR).

    python3 examples/feedback_client.py                     # tcp://127.0.0.1:5557
    python3 examples/feedback_client.py --port 6000 --count 10
    python3 examples/feedback_client.py --udp --port 5558

In a stimulus script, replace print_sample() with whatever drives the display (e.g. a thermometer's height).
"""
import argparse
import json
import socket
import sys
import time


def print_sample(sample):
    value = sample.get("feedback")
    value_text = "n/a" if value is None else f"{value:+.3f}"
    latency = sample.get("latency_ms", {}).get("end_to_end")
    latency_text = "" if latency is None else f"  latency {latency:.1f} ms"
    motion = sample.get("fd_mm")
    motion_text = "" if motion is None else f"  FD {motion:.2f} mm"
    print(f"volume {sample.get('volume', '?'):>5}  feedback {value_text}{motion_text}{latency_text}", flush=True)


def tcp_lines(host, port, retry_s):
    """Yields decoded JSON objects, one per line; reconnects after errors."""
    while True:
        try:
            with socket.create_connection((host, port), timeout=10) as conn:
                conn.settimeout(None)
                print(f"connected to {host}:{port}", file=sys.stderr, flush=True)
                buffered = b""
                while True:
                    chunk = conn.recv(65536)
                    if not chunk:
                        raise ConnectionError("server closed the connection")
                    buffered += chunk
                    while b"\n" in buffered:
                        line, buffered = buffered.split(b"\n", 1)
                        if line.strip():
                            yield json.loads(line)
        except (OSError, ConnectionError, json.JSONDecodeError) as error:
            print(f"{error}; retrying in {retry_s} s", file=sys.stderr, flush=True)
            time.sleep(retry_s)


def udp_datagrams(host, port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((host, port))
        print(f"listening for UDP on {host}:{port}", file=sys.stderr, flush=True)
        while True:
            data, _ = s.recvfrom(65536)
            try:
                yield json.loads(data)
            except json.JSONDecodeError:
                print(f"not JSON: {data[:80]!r}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=None, help="default 5557 (TCP) or 5558 (UDP)")
    parser.add_argument("--udp", action="store_true", help="receive UDP datagrams instead of a TCP stream")
    parser.add_argument("--count", type=int, default=0, help="exit after this many samples (0: run until killed)")
    parser.add_argument("--retry", type=float, default=1.0, help="seconds between reconnection attempts")
    args = parser.parse_args()
    port = args.port or (5558 if args.udp else 5557)
    source = udp_datagrams(args.host, port) if args.udp else tcp_lines(args.host, port, args.retry)
    for n, sample in enumerate(source, start=1):
        print_sample(sample)
        if args.count and n >= args.count:
            return 0
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(0)
