"""The kernel library. Importing a family module registers its kernels (see ``numbakern.registry``)."""
