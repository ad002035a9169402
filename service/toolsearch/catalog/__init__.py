"""Per-caller catalogs (`service`): what the upstream lists for a caller, cached, refreshed and
searchable. Upstream pages become a caller's tools in `listing`; one listing at a time across
replicas in `coherence`; tools and index shared by equal catalogs in `toolsets` (with their
`twins`); what a catalog withholds in `quarantine`.
"""

from toolsearch.catalog.service import Catalog, CatalogService, ServedCatalogs

__all__ = ["Catalog", "CatalogService", "ServedCatalogs"]
