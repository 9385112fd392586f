#!/usr/bin/env python3
"""A stand-in for pyneal_scanner: streams synthetic volumes to rtfmri's pyneal socket (docs/pyneal.md).

Optional tool, not used by the tests. Needs Python 3, pyzmq and numpy (pip install pyzmq numpy). It speaks
pyneal_scanner's protocol exactly (PAIR socket that connects, handshake string echoed back, then per volume
send_json(header, SNDMORE) + send(C-ordered array) and one reply string; 'STOP' in a reply ends the scan), so a
lab can check the network path to rtfmri before pointing the real scanner adapter at it. Unlike pyneal_scanner,
every receive here has a timeout, so a missing server is reported instead of waiting forever.

    rtfmri run --pyneal tcp://0.0.0.0:5555 ...            # on the analysis machine
    python3 examples/pyneal_sender.py --address tcp://ANALYSIS_HOST:5555 --volumes 20 --tr 2.0

Voxel (i, j, k) of volume t holds 1000 + (i + 2 j + 3 k + t) % 1000, a ramp that makes an axis mix-up visible.
"""
import argparse
import json
import sys
import time

import numpy as np
import zmq


def make_volume(shape, dtype, t):
    i, j, k = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    return np.ascontiguousarray((1000 + (i + 2 * j + 3 * k + t) % 1000).astype(dtype))  # C order: z fastest


def receive(socket, timeout_s):
    if not socket.poll(int(timeout_s * 1000)):
        sys.exit(f"no reply within {timeout_s} s: is rtfmri listening (rtfmri run --pyneal ADDRESS)?")
    return socket.recv_string()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", default="tcp://127.0.0.1:5555", help="rtfmri's pyneal address")
    parser.add_argument("--volumes", type=int, default=10)
    parser.add_argument("--shape", type=int, nargs=3, default=[64, 64, 33], metavar=("X", "Y", "Z"))
    parser.add_argument("--dtype", default="int16", help="NumPy dtype: uint8, int16, uint16, int32, float32, float64")
    parser.add_argument("--voxel", type=float, nargs=3, default=[3.0, 3.0, 3.5], metavar=("DX", "DY", "DZ"))
    parser.add_argument("--tr", type=float, default=2.0, help="TR in seconds (sent as the string str(tr))")
    parser.add_argument("--no-wait", action="store_true", help="send as fast as replies come instead of one per TR")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for each reply")
    args = parser.parse_args()

    shape = tuple(args.shape)
    affine = np.diag(list(args.voxel) + [1.0])  # RAS+, voxel (0, 0, 0) centred in the field of view
    affine[:3, 3] = [-(n - 1) * d / 2 for n, d in zip(shape, args.voxel)]

    socket = zmq.Context.instance().socket(zmq.PAIR)
    socket.setsockopt(zmq.LINGER, 0)
    socket.connect(args.address)

    handshake = "hello from pyneal_sender.py"
    socket.send_string(handshake)
    reply = receive(socket, args.timeout)
    if reply != handshake:
        sys.exit(f"handshake not echoed: got {reply!r}")
    print(f"connected to {args.address}")

    for t in range(args.volumes):
        start = time.monotonic()
        volume = make_volume(shape, args.dtype, t)
        header = {
            "volIdx": t,
            "TR": str(args.tr),
            "dtype": str(volume.dtype),
            "shape": volume.shape,
            "affine": json.dumps(affine.tolist()),
        }
        socket.send_json(header, zmq.SNDMORE)
        socket.send(volume, copy=False)
        reply = receive(socket, args.timeout)
        print(f"volume {t}: {reply}")
        if "STOP" in reply:
            break
        if not args.no_wait:
            time.sleep(max(0.0, args.tr - (time.monotonic() - start)))
    socket.close()


if __name__ == "__main__":
    main()
