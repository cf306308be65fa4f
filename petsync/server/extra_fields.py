"""A newer API for trying clients: pets that carry fields beyond the interface's.

APIs grow; the most common change is a field the interface does not name. With
``Faults.extra_fields`` on (``petsync serve --extra-fields-demo``, ``petsync demo
--extra-fields-demo``), listPets answers each pet with some of five such fields, chosen by
its id so every run and every page agrees:

=============  ==========================  ======================
field          JSON type                   pets carrying it
=============  ==========================  ======================
``tag``        string                      ids divisible by 3
``birthDate``  string (a date)             even ids
``weightKg``   number                      ids divisible by 5
``vaccinated`` boolean                     ids divisible by 4
``owner``      object (``name``, ``since``) ids divisible by 7
=============  ==========================  ======================

Stored pets are unchanged: the fields are added as each page is rendered.
"""

from __future__ import annotations

from typing import Any

EXTRA_FIELD_NAMES: tuple[str, ...] = ("tag", "birthDate", "weightKg", "vaccinated", "owner")
_TAGS = ("calm", "playful", "shy")


def extra_fields(pet_id: int) -> dict[str, Any]:
    """The extra fields the demo sends for the pet ``pet_id``.

    >>> extra_fields(42)
    {'tag': 'shy', 'birthDate': '2010-07-15', 'owner': {'name': 'Owner 42', 'since': 2017}}
    """
    fields: dict[str, Any] = {}
    if pet_id % 3 == 0:
        fields["tag"] = _TAGS[pet_id // 3 % 3]
    if pet_id % 2 == 0:
        fields["birthDate"] = f"20{10 + pet_id % 14}-{1 + pet_id % 12:02d}-{1 + pet_id % 28:02d}"
    if pet_id % 5 == 0:
        fields["weightKg"] = 0.5 + (pet_id % 80) * 0.25
    if pet_id % 4 == 0:
        fields["vaccinated"] = pet_id % 8 == 0
    if pet_id % 7 == 0:
        fields["owner"] = {"name": f"Owner {pet_id % 50}", "since": 2015 + pet_id % 10}
    return fields
