"""The console: static files (HTML, CSS, JavaScript) served by the API function under `/ui/`.

A page where people watch runs and answer approvals. It is plain files shipped in the package (no build
step, no CDN, no library): every data call is made by the browser to the public API with the key the
person types, so the console holds no privilege of its own, and its routes need none (`assets`).
"""
