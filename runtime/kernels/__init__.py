"""Kernels: the registry (:mod:`.registry`), device-neutral argument logic
(:mod:`.params`), caches (:mod:`.caching`) and one package per device (:mod:`.cpu`)."""
