"""Snapshots on object stores (S3 and compatible stores, GCS, Azure) through ``pyarrow.fs``.

``credentials`` (which GCS or Azure credentials and endpoint a run uses, chosen in Python
before any store client exists), ``filesystem`` (the pyarrow file system of a location, the
reachability check made before any API request, and the translation of store errors),
``calls`` (store steps in a worker thread, so signals act while a store call blocks),
``lock`` (the run lock as a conditional create with an expiry; its object on each store in
``lock``, ``gcslock`` and ``azurelock``) and ``publish`` (staging, publication by
server-side copies with the manifest last, roll-back of a run that died, pruning). Local
directories keep :mod:`petsync.export.publish` and :mod:`petsync.export.lock`.
"""
