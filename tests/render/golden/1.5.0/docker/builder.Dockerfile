# syntax=docker/dockerfile:1
# AIACC-Training (Perseus) 1.5.0: cibuildwheel builder image, CUDA toolkit.
# Rendered by `aiacc-build render`: do not edit. The base is cibuildwheel's manylinux image
# (MANYLINUX_IMAGE; CI passes the exact image its pinned cibuildwheel uses), which has the
# /opt/python/cpXY-cpXY layout, the compilers and auditwheel cibuildwheel expects.
# The CUDA toolkit is copied from NVIDIA's devel image of the same RHEL generation (CUDA_IMAGE).
ARG CUDA_IMAGE
ARG MANYLINUX_IMAGE
FROM ${CUDA_IMAGE} AS cuda
FROM ${MANYLINUX_IMAGE}
ARG CUDA_VERSION
COPY --from=cuda /usr/local/cuda-${CUDA_VERSION} /usr/local/cuda-${CUDA_VERSION}
ENV CUDA_HOME=/usr/local/cuda-${CUDA_VERSION} \
    PATH=/usr/local/cuda-${CUDA_VERSION}/bin:${PATH}
RUN ln -sfn "/usr/local/cuda-${CUDA_VERSION}" /usr/local/cuda \
 && nvcc --version \
 && ls -d /opt/python/cp3*-cp3*
# Gloo, the transport of the engine the TensorFlow and MXNet bindings link, built by the project's
# recipe (recipes/gloo/build.sh) from Debian's gloo source tarballs that the CI job fetched into
# docker/gloo/sources beside the recipe: the image needs no apt. The bindings' configure step runs the
# same recipe, which finds this build in GLOO_CACHE_DIR.
COPY docker/gloo/ /opt/perseus-gloo/
RUN GLOO_CACHE_DIR=/opt/perseus-gloo bash /opt/perseus-gloo/build.sh
ENV GLOO_CACHE_DIR=/opt/perseus-gloo
# The MPI headers of the engine's MPI bootstrap plugins (declared parts of every framework wheel), unpacked by
# the project's recipe (recipes/mpi/fetch.sh) from the Debian .debs the CI job fetched and checked into
# docker/mpi/debs; the engine's configure step runs the same recipe, which finds them in MPI_CACHE_DIR.
COPY docker/mpi/ /opt/perseus-mpi/
RUN MPI_CACHE_DIR=/opt/perseus-mpi bash /opt/perseus-mpi/fetch.sh
ENV MPI_CACHE_DIR=/opt/perseus-mpi
LABEL perseus.release="1.5.0" \
      perseus.role="cibuildwheel builder"
