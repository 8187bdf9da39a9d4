/// The `PhotoMedia` module.
enum PhotoMediaModule {}
