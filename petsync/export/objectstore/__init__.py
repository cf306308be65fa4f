"""Snapshots on object stores (S3 and compatible stores, GCS, Azure) through ``pyarrow.fs``.

``filesystem`` (the pyarrow file system of a location, its credentials from the provider's
standard chain, the reachability check made before any API request, and the translation of
store errors), ``lock`` (the run lock as a conditional create with an expiry) and
``publish`` (staging, publication by server-side copies with the manifest last, roll-back of
a run that died, pruning). Local directories keep :mod:`petsync.export.publish` and
:mod:`petsync.export.lock`.
"""
