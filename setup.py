"""Install tvm_tensorgpt: a TensorGPT search strategy plugin for TVM MetaSchedule."""

from setuptools import find_packages, setup

setup(
    name="tvm_tensorgpt",
    version="0.1.0",
    description="TensorGPT: hardware-grounded generative schedule search for TVM MetaSchedule",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["tvm_tensorgpt", "tvm_tensorgpt.*"]),
    package_data={"tvm_tensorgpt": ["**/*.json", "**/*.safetensors"]},
    python_requires=">=3.10",
    install_requires=[
        "apache-tvm>=0.27,<0.28",
        # 0.1.15.x segfaults when MetaSchedule serialises modules (ToJSONGraph); 0.1.14.post1 works.
        "apache-tvm-ffi==0.1.14.post1",
        # Install the CPU wheel first (pip install torch==2.13.0); this range then adds nothing.
        "torch>=2.4,<3",
        "transformers>=5,<6",
        "peft>=0.21,<1",
        "numpy>=1.26",
        "safetensors>=0.4",
        "tqdm>=4.60",
        "matplotlib>=3.7",
        # TVM's default cost model; the -cpu build avoids the multi-hundred-MB NCCL wheel.
        "xgboost-cpu>=2; platform_system=='Linux'",
        "xgboost>=2; platform_system!='Linux'",
        # MetaSchedule needs these at run time, but apache-tvm does not pull them in.
        "psutil>=5.9",
        "cloudpickle>=2",
        "tornado>=6",
    ],
    extras_require={"test": ["pytest>=7", "import-linter>=2.1"]},  # lint-imports holds the layers
    entry_points={"console_scripts": ["tensorgpt=tvm_tensorgpt.cli:main"]},
)
