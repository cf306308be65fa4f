"""Snapshots on object stores (S3 and compatible stores, GCS, Azure) through ``pyarrow.fs``.

``lock`` (the run lock as a conditional create with an expiry; its object on each store in
``lock``, ``gcslock`` and ``azurelock``) and ``publish`` (staging, publication by
server-side copies with the manifest last, roll-back of a run that died, pruning). The
file systems, credentials and store calls are :mod:`petsync.storage`'s. Local directories
keep :mod:`petsync.export.publish` and :mod:`petsync.export.lock`.
"""
