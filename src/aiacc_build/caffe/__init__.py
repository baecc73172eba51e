"""BVLC Caffe: the manual's patches (recipes/caffe/patches/bvlc_caffe), libperseus-caffe
(native/bindings/caffe) and the recipe that builds Caffe with them (recipes/caffe/build.sh)."""
