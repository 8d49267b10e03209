"""The README's screenshots of the console, made from the demo: `make screenshots`.

Starts `atrium serve --demo` on a free port with a data directory of its own, opens home (as
the demo's Amelia Chen), the catalog, a component and a workload in Debian's Chromium, light and
dark at a desktop's width and light at a phone's, and writes docs/screenshots/<page>-<look>.png.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from playwright.async_api import async_playwright

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
PAGES = {
    "home": "/",
    "catalog": "/catalog",
    "component": "/catalog/default/component/checkout",
    "workload": "/workloads/demo%20(emulated)/checkout/checkout",
}
LOOKS = {  # name: (width, height, colour scheme)
    "light": (1440, 900, "light"),
    "dark": (1440, 900, "dark"),
    "phone": (390, 844, "light"),
}
USER = "amelia.chen"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(base: str, server: subprocess.Popen[bytes], within: float = 120.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"atrium serve --demo exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("atrium serve --demo was not ready in time")


async def _shoot(base: str) -> list[Path]:
    written = []
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM)
        for look, (width, height, scheme) in LOOKS.items():
            context = await browser.new_context(
                viewport={"width": width, "height": height},
                color_scheme=scheme,  # type: ignore[arg-type]
                device_scale_factor=1,
            )
            await context.add_cookies([{"name": "atrium_demo_user", "value": USER, "url": base}])
            page = await context.new_page()
            for name, path in PAGES.items():
                await page.goto(base + path, wait_until="networkidle")
                await page.wait_for_timeout(1500)  # charts drawn, the log followed
                target = OUT / f"{name}-{look}.png"
                await page.screenshot(path=str(target))
                written.append(target)
            await context.close()
        await browser.close()
    return written


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="atrium-screenshots-") as data:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
        # No balancer to leave: SIGTERM stops it at once.
        env |= {
            "ATRIUM_DATA_DIR": data,
            "ATRIUM_LOG_LEVEL": "WARNING",
            "ATRIUM_SHUTDOWN_GRACE": "0",
        }
        server = subprocess.Popen(
            [sys.executable, "-m", "atrium.cli", "serve", "--demo", "--port", str(port)],
            cwd=ROOT,
            env=env,
        )
        try:
            _wait_ready(base, server)
            time.sleep(5)  # the demo's history and workloads settle
            for path in asyncio.run(_shoot(base)):
                print(path.relative_to(ROOT))
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
