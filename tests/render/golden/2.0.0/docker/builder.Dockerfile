# syntax=docker/dockerfile:1
# AIACC-Training (Perseus) 2.0.0: cibuildwheel builder image, CUDA toolkit.
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
LABEL perseus.release="2.0.0" \
      perseus.role="cibuildwheel builder"
