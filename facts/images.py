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


def parse(image: str) -> ImageReference | None:
    """The tag and digest of ``image``, or None when it is not an image reference."""
    match = _REFERENCE.match(image)
    return None if match is None else ImageReference(match["tag"], match["digest"])
