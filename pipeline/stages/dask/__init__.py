"""The Dask engine: the same stages spread over a cluster."""
