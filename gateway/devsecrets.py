"""Development secrets generated into `var/` on first run.

Production sets SECRET_KEY, SWITCHYARD_ENCRYPTION_KEYS and SWITCHYARD_KEY_PEPPER in the
environment; a fresh clone needs none of them. The file is created atomically so that
several server workers starting together agree on one set of secrets, and it is never
committed (`var/` is ignored).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
from pathlib import Path


def _generate() -> dict[str, str]:
    return {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "SWITCHYARD_ENCRYPTION_KEYS": "dev1:" + base64.b64encode(secrets.token_bytes(32)).decode(),
        "SWITCHYARD_KEY_PEPPER": secrets.token_urlsafe(32),
    }


def load_dev_secrets(var_dir: Path) -> dict[str, str]:
    """Return the dev secrets in `var_dir/dev-secrets.json`, creating the file if absent."""
    path = var_dir / "dev-secrets.json"
    var_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(50):  # another process may be between create and write
            text = path.read_text()
            if text:
                return json.loads(text)
            import time

            time.sleep(0.02)
        raise RuntimeError(f"{path} exists but is empty; delete it to regenerate") from None
    values = _generate()
    with os.fdopen(fd, "w") as handle:
        json.dump(values, handle)
    return values
