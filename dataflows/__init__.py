import os

# Hamilton loads its plugins for whatever else is installed (dask, matplotlib, LightGBM, scikit-learn: 1-2 s of
# imports) unless told not to; no dataflow uses them. Set before any module of the package imports Hamilton.
os.environ.setdefault("HAMILTON_AUTOLOAD_EXTENSIONS", "0")
