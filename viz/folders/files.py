"""Which images a run covers, what each is called in the output folder, and its class when the folder is labelled.

A folder argument is read one of two ways:

- **images**: the image files directly inside it (not recursive), sorted by name;
- **labelled by sub-folder**: when it holds no image file itself but its sub-folders do, as ImageNet's ``val/``
  and any ``torchvision.datasets.ImageFolder`` are laid out: ``FOLDER/<class>/<image>``. The sub-folder names the
  class of its images, as one of (tried in this order)
    1. a class index, e.g. ``281``;
    2. a WordNet ID, e.g. ``n02123045``, for 1000-class ImageNet models (ImageNet's own folder names);
    3. a class name of the checkpoint, e.g. ``tabby`` or ``Egyptian_cat`` (case and ``_`` for space do not matter).
  A sub-folder that names no class is an error that says which forms work, before any image is analysed.

A folder with image files of its own is read as images only: its sub-folders are not read (nor taken as classes).
``skipped_folders`` names those that hold images, so that the command can say so (``python -m viz FOLDER SUB``
reads both).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from vit.labels import imagenet_wnids

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp", ".tif", ".tiff", ".avif"}
_WNID = re.compile(r"n\d{8}")


@dataclass(frozen=True)
class ImageEntry:
    path: Path                 # the image file (may be missing or unreadable: reported when it is opened)
    name: str                  # its output folder under --out, unique in the run (``stem``, ``class/stem``)
    label: int | None = None   # class index when its folder is labelled, else None


def image_files(folder: Path, suffixes=IMAGE_SUFFIXES) -> list[Path]:
    """The image files (or those with other ``suffixes``: a folder of videos) directly inside ``folder``, sorted by
    name."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes)


def skipped_folders(paths: Sequence[str | Path]) -> list[Path]:
    """The sub-folders a run of ``paths`` does not read although they hold images (at any depth): those of every
    folder argument that has image files of its own, and are not named themselves, sorted."""
    named = {Path(p).resolve() for p in paths}
    skipped = []
    for text in paths:
        path = Path(text)
        if path.is_dir() and image_files(path):
            skipped += [sub for sub in sorted(p for p in path.iterdir() if p.is_dir())
                        if sub.resolve() not in named and _holds_images(sub)]
    return skipped


def _holds_images(folder: Path) -> bool:
    return any(p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES for p in folder.rglob("*"))


def class_index(folder_name: str, labels: Sequence[str]) -> int:
    """A labelled sub-folder's name -> class index (see the module docstring); ValueError when it names none."""
    K = len(labels)
    if folder_name.isdigit() and int(folder_name) < K:
        return int(folder_name)
    if K == 1000 and _WNID.fullmatch(folder_name) and folder_name in imagenet_wnids():
        return imagenet_wnids().index(folder_name)
    wanted = folder_name.replace("_", " ").casefold()
    matches = [i for i, label in enumerate(labels) if label.replace("_", " ").casefold() == wanted]
    if len(matches) == 1:
        return matches[0]
    example = labels[0] if K else "tench"
    problem = f"names {len(matches)} classes" if matches else "names no class of this model"
    raise ValueError(f"The sub-folder {folder_name!r} {problem}! Expected a class index 0–{K - 1}, "
                     + ("a WordNet ID such as n01440764, " if K == 1000 else "")
                     + f"or one of the model's {K} class names, such as {example!r}.")


def _unique(names: list[str]) -> list[str]:
    """A repeated name gets a numbered suffix: cat, cat-2, cat-3."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        n = seen.get(name, 0)
        seen[name] = n + 1
        out.append(name if n == 0 else f"{name}-{n + 1}")
    return out


def list_images(paths: Sequence[str | Path], labels: Sequence[str], suffixes=IMAGE_SUFFIXES) -> list[ImageEntry]:
    """Command-line paths -> the run's images in order: files as given, folders as described above.

    ``labels``: the model's class names, to read labelled sub-folders. Missing paths are kept (reported when
    opened), as are files with any suffix when named directly. ``suffixes``: what a folder's files are read
    (``vit.video_file.VIDEO_SUFFIXES`` for a folder of videos).
    """
    found: list[tuple[Path, str, int | None]] = []
    for text in paths:
        path = Path(text)
        if not path.is_dir():
            found.append((path, path.stem, None))
            continue
        files = image_files(path, suffixes)
        classes = [] if files else sorted(p for p in path.iterdir() if p.is_dir() and image_files(p, suffixes))
        if not classes:
            found.extend((p, p.stem, None) for p in files)
            continue
        for folder in classes:
            label = class_index(folder.name, labels)
            found.extend((p, f"{folder.name}/{p.stem}", label) for p in image_files(folder, suffixes))
    names = _unique([name for _, name, _ in found])
    return [ImageEntry(path, name, label) for (path, _, label), name in zip(found, names)]
