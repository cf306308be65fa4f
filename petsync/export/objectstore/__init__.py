"""The run lock on object stores (S3 and compatible stores, GCS, Azure).

``lock`` (the run lock as a conditional create with an expiry; its object on each store in
``lock``, ``gcslock`` and ``azurelock``). The file systems, credentials, store calls and
publication are :mod:`petsync.storage`'s. Local directories keep
:mod:`petsync.export.lock`.
"""
