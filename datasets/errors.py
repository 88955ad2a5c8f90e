"""The one error every dataset loader raises: it names the file, the data row and the field."""
from __future__ import annotations

from pathlib import Path


class DatasetError(ValueError):
    """A data file does not match its documented format.

    `row` is the 1-based data row (the header is not counted); None where the problem has no row
    (a JSON field, or a shape that is missing altogether — then `after_row` says where the file ended).
    """

    def __init__(self, file: str | Path, field: str, problem: str, row: int | None = None,
                 after_row: int | None = None):
        self.file = str(file)
        self.field = field
        self.row = row
        self.problem = problem
        if row is not None:
            where = f"row {row}"
        elif after_row is not None:
            where = f"end of file (after row {after_row})"
        else:
            where = "file"
        super().__init__(f"{Path(file).name}: {where}, field {field!r}: {problem}")
