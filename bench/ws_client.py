"""A minimal WebSocket client (RFC 6455) on the standard library, for the benches on machines
without the websockets package: text frames out (masked, as clients must), text frames in
(fragments joined, pings answered)."""
import base64
import os
import socket
import struct
from urllib.parse import urlparse


class WebSocket:
    def __init__(self, url, headers=None, timeout=600):
        u = urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {u.path or '/'} HTTP/1.1", f"Host: {u.hostname}:{u.port or 80}",
                 "Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {key}",
                 "Sec-WebSocket-Version: 13"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._read_some()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise OSError(f"WebSocket upgrade refused: {head.splitlines()[0]!r}")

    def _read_some(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise OSError("WebSocket closed by the server")
        return chunk

    def _take(self, n):
        while len(self.buf) < n:
            self.buf += self._read_some()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _send_frame(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def send(self, text):
        self._send_frame(0x1, text.encode())

    def recv(self):
        """The next text message."""
        message = b""
        while True:
            b0, b1 = self._take(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._take(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._take(8))[0]
            payload = self._take(n)  # server frames are not masked
            opcode = b0 & 0x0F
            if opcode == 0x9:
                self._send_frame(0xA, payload)
            elif opcode == 0x8:
                raise OSError("WebSocket closed by the server")
            elif opcode in (0x0, 0x1):
                message += payload
                if b0 & 0x80:
                    return message.decode()

    def close(self):
        try:
            self._send_frame(0x8, struct.pack(">H", 1000))
        finally:
            self.sock.close()
