"""What the client side and the reference server share: the interface and its plumbing.

``errors`` (the one exception tree), ``models`` (Pet, NewPet, PetStatus, Error; int64-exact),
``interface`` (the interface's own facts: limits, paths, versions), ``apikey`` (the key and
the one redaction function), ``text`` (server text made safe to show), ``reading`` (a local
file checked before it is read), ``files`` (atomic writes that never follow a link, fsync,
locks), ``stop`` (the request to stop a job after a signal) and ``arrow_arrays`` (Arrow
arrays built without pandas, for the export and the history). Nothing here imports another
petsync package.
"""
