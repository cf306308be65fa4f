"""What a workbook reader says of a cell it cannot render, and the error code of each.

The reasons are the workbook reader's (:mod:`.workbook`); the validation reads their codes
(``petsync_error_code``) without loading the workbook readers, which a CSV import never needs.
"""

from __future__ import annotations

FORMULA_WITHOUT_VALUE = (
    "holds a formula with no saved value (the program that wrote the workbook did not "
    "compute it); open the workbook in Excel or LibreOffice and save it, or type the value"
)


_NOT_EXACT_END = "(a leading apostrophe: '12345678901234567) and save the workbook again"
NUMBER_NOT_EXACT = (
    "holds {value}, a number the workbook stores only as a floating-point value, exact only "
    "below 2^53 (9007199254740992): its last digits may be lost. Type it as text " + _NOT_EXACT_END
)

NUMBER_ROUNDED = (
    "holds {value}, a whole number of 16 digits that the workbook stores with fewer "
    "significant digits (LibreOffice keeps 15): its last digits are lost. Type it as text "
    + _NOT_EXACT_END
)


def cell_problem_code(why: str) -> str:
    """The ``petsync_error_code`` of a cell problem a workbook reader found (its reason's kind).

    >>> cell_problem_code(FORMULA_WITHOUT_VALUE)
    'formula_without_value'
    """
    return "number_not_exact" if why.endswith(_NOT_EXACT_END) else "formula_without_value"
