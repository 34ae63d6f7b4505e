"""Documentation search internals: corpus extraction, lexical tokens, the embedding model, the index.

The public entry points are in stitch_mcp.search (search_cuda_docs, get_doc, build_index,
add_documents).
"""
