#!/usr/bin/env python3
"""A protocol test server for ccscope's NCCL RAS client: it answers as NCCL's RAS server does
(src/ras/client_support.cc: "CLIENT PROTOCOL n" -> "SERVER PROTOCOL v", "SET FORMAT json|text"
-> "OK" or "ERROR: Unknown command ...", "TIMEOUT n" -> "OK", "[VERBOSE] STATUS" -> the report,
then the connection is closed) and replays a recorded report: a transcript (lines "> " sent by
the client, "< " by the server, then the report) for text, a JSON file for JSON.

Usage: ras_server.py [--text FILE] [--json FILE] [--protocol N] [--json-unknown]
                     [--mode normal|stall|close-after-handshake|not-ras|slow]
Prints "PORT n" on stdout once listening (port 0: the kernel picks), serves until killed."""
import argparse
import socket
import sys
import threading
import time


def report_of(path):
    if path is None:
        return None
    lines = open(path).read().split("\n")
    body = [l for l in lines if not (l.startswith("> ") or l.startswith("< "))]
    return "\n".join(body)


def serve(conn, args, text, js):
    f = conn.makefile("rwb", buffering=0)
    fmt = "text"
    try:
        if args.mode == "not-ras":
            f.write(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            return
        while True:
            line = f.readline()
            if not line:
                return
            cmd = line.decode(errors="replace").rstrip("\r\n")
            up = cmd.upper()
            if up.startswith("CLIENT PROTOCOL"):
                f.write(f"SERVER PROTOCOL {args.protocol}\n".encode())
                if args.mode == "close-after-handshake":
                    return
            elif up.startswith("SET FORMAT") and not args.json_unknown:
                want = cmd.split()[-1].lower()
                if want in ("json", "text"):
                    fmt = want
                    f.write(b"OK\n")
                else:
                    f.write(f"ERROR: Invalid format {want}\n".encode())
            elif up.startswith("TIMEOUT"):
                f.write(b"OK\n")
            elif up in ("STATUS", "VERBOSE STATUS"):
                if args.mode == "stall":
                    time.sleep(3600)
                body = js if fmt == "json" and js is not None else text
                data = (body or "").encode()
                if args.mode == "slow":  # half now, the rest much later
                    f.write(data[: len(data) // 2])
                    time.sleep(3600)
                f.write(data)
                return
            else:
                f.write(f"ERROR: Unknown command {cmd}\n".encode())
    except OSError:
        pass
    finally:
        try:
            conn.close()
        except OSError:
            pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--text")
    p.add_argument("--json")
    p.add_argument("--protocol", type=int, default=2)
    p.add_argument("--json-unknown", action="store_true", help="an NCCL before 2.28.7")
    p.add_argument("--mode", default="normal",
                   choices=["normal", "stall", "close-after-handshake", "not-ras", "slow"])
    p.add_argument("--port", type=int, default=0)
    args = p.parse_args()
    text = report_of(args.text)
    js = open(args.json).read() if args.json else None
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", args.port))
    s.listen(16)
    print(f"PORT {s.getsockname()[1]}", flush=True)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=serve, args=(conn, args, text, js), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
