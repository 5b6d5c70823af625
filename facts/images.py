"""Container image references: [domain[:port]/]path[:tag][@digest]."""

from __future__ import annotations

import re
from dataclasses import dataclass

# distribution/reference's grammar (regexp.go).
_DOMAIN = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?"
_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
_REFERENCE = re.compile(rf"^(?:{_DOMAIN}/)?{_PATH}(?::(?P<tag>[\w][\w.-]{{0,127}}))?(?:@(?P<digest>sha256:[0-9a-f]{{64}}))?$", re.ASCII)


@dataclass(frozen=True)
class ImageReference:
    tag: str | None
    digest: str | None

    @property
    def pinned(self) -> bool:
        """Whether a node pulls the same image every time: by digest (the tag then is only a label), or by a tag but latest."""
        return bool(self.digest or (self.tag and self.tag != "latest"))


# A name's registry host, as distribution/reference (v0.6.0, normalize.go: splitDockerDomain) splits it:
# the first component is a host only when it holds '.' or ':', is "localhost" or has capitals (a path may
# not); any other name is Docker Hub's, whose older host name is index.docker.io and whose official
# images live under library/.
DOCKER_HUB = "docker.io"
_LEGACY_DOCKER_HUB = "index.docker.io"
_OFFICIAL = "library/"


def split_host(image: str) -> tuple[str, str]:
    """The registry host of ``image`` and its path (with tag or digest) on that host."""
    first, slash, rest = image.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost" or first != first.lower()):
        host, path = first, rest
    else:
        host, path = DOCKER_HUB, image
    if host == _LEGACY_DOCKER_HUB:
        host = DOCKER_HUB
    if host == DOCKER_HUB and "/" not in path:
        path = f"{_OFFICIAL}{path}"
    return host, path


def parse(image: str) -> ImageReference | None:
    """The tag and digest of ``image``, or None when it is not an image reference."""
    match = _REFERENCE.match(image)
    return None if match is None else ImageReference(match["tag"], match["digest"])
