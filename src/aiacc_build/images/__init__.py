"""Docker images: a local engine, a locally made base image, a registry on 127.0.0.1, build/push/pull.

No registry can be reached from this machine, so the base image is made with debootstrap and
`docker import`, and images are pushed to a docker-registry served on loopback.
"""
