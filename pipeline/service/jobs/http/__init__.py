"""The jobs' HTTP side: the API under /api/jobs, its OpenAPI part, download links, the page."""
