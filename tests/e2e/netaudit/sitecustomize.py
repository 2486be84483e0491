"""Logs every attempt to reach another machine, in any Python started with this folder on
PYTHONPATH (Python imports ``sitecustomize`` at start-up, before any user code).

The offline test puts this folder on the PYTHONPATH of the Jupyter kernels it starts.
An audit hook (PEP 578) sees each ``socket.connect``, ``sendto``, ``sendmsg`` and name
lookup made through Python's socket module; every one aimed at an address that is not
this machine's loopback is appended as a JSON line to the file named by
``NETAUDIT_LOG``. Each process that loads the hook also appends one line to
``NETAUDIT_LOADED``, so a test can show the hook was really active. Loopback traffic
(Jupyter's own ZeroMQ sockets between kernel and client) and Unix sockets are not logged.

Only Python-level sockets are seen; C libraries that open sockets themselves are not.
That is why the test also runs inside a network namespace with no route out: anything
that slipped past the hook would fail there instead.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import sys
from typing import Any

LOG = os.environ.get("NETAUDIT_LOG", "")
LOADED = os.environ.get("NETAUDIT_LOADED", "")
LOOPBACK_NAMES = {"", "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
INET_FAMILIES = {socket.AF_INET, socket.AF_INET6}


def is_loopback(host: Any) -> bool:
    """True for None, an empty host, localhost or a loopback address (127/8, ::1)."""
    if host is None:
        return True  # getaddrinfo(None, port): the local wildcard address
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    name = str(host).split("%", 1)[0].strip().lower()  # drop an IPv6 zone (fe80::1%eth0)
    if name in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False  # any other host name would need a DNS lookup: not local
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def target_of(event: str, args: tuple[Any, ...]) -> Any:
    """The host an audited socket event reaches for, or None when it stays local."""
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
        sock, address = args[0], args[1]
        if getattr(sock, "family", None) not in INET_FAMILIES or not address:
            return None  # a Unix or netlink socket, or a send on an already connected one
        return address[0]
    if event in ("socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyname_ex",
                 "socket.gethostbyaddr"):
        return args[0]
    return None


def _append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(line + "\n")


def audit(event: str, args: tuple[Any, ...]) -> None:
    if not event.startswith("socket."):
        return
    host = target_of(event, args)
    if host is not None and not is_loopback(host):
        _append(LOG, json.dumps({"pid": os.getpid(), "event": event, "host": repr(host),
                                 "argv": sys.orig_argv[:4]}))


if LOG:
    sys.addaudithook(audit)
    if LOADED:
        _append(LOADED, json.dumps({"pid": os.getpid(), "argv": sys.orig_argv[:4]}))
