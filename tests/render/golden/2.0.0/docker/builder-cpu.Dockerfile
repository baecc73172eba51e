# syntax=docker/dockerfile:1
# AIACC-Training (Perseus) 2.0.0: cibuildwheel builder image, CPU.
# Rendered by `aiacc-build render`: do not edit. The base is cibuildwheel's manylinux image
# (MANYLINUX_IMAGE; CI passes the exact image its pinned cibuildwheel uses), which has the
# /opt/python/cpXY-cpXY layout, the compilers and auditwheel cibuildwheel expects.
ARG MANYLINUX_IMAGE
FROM ${MANYLINUX_IMAGE}
RUN ls -d /opt/python/cp3*-cp3*
LABEL perseus.release="2.0.0" \
      perseus.role="cibuildwheel builder"
