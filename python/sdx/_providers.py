"""Execution providers as onnxruntime names them. sdx runs every node on the CPU, so
CPUExecutionProvider is the one available provider. Asking for another one that onnxruntime knows
(CUDAExecutionProvider, ...) warns and falls back to the CPU, as onnxruntime does when a provider is not
in the build; a name onnxruntime does not know is an error ("Unknown Provider Type")."""
from __future__ import annotations

import warnings
from typing import Any, Sequence

CPU = "CPUExecutionProvider"

# onnxruntime's providers, highest priority first (onnxruntime's own order; CPU last).
_ALL_PROVIDERS = [
    "TensorrtExecutionProvider", "CUDAExecutionProvider", "MIGraphXExecutionProvider", "ROCMExecutionProvider",
    "OpenVINOExecutionProvider", "DnnlExecutionProvider", "VitisAIExecutionProvider", "QNNExecutionProvider",
    "NnapiExecutionProvider", "VSINPUExecutionProvider", "JsExecutionProvider", "CoreMLExecutionProvider",
    "ArmNNExecutionProvider", "ACLExecutionProvider", "DmlExecutionProvider", "RknpuExecutionProvider",
    "WebNNExecutionProvider", "WebGpuExecutionProvider", "XnnpackExecutionProvider", "CANNExecutionProvider",
    "AzureExecutionProvider", "NvTensorRTRTXExecutionProvider", CPU,
]


def get_all_providers() -> list[str]:
    """Every provider name onnxruntime defines, highest priority first; CPUExecutionProvider is last."""
    return list(_ALL_PROVIDERS)


def get_available_providers() -> list[str]:
    """The providers this build can run: the CPU."""
    return [CPU]


def _provider_options(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a dict of options, not {type(value).__name__}")
    return {str(k): str(v) for k, v in value.items()}


def check_and_normalize_provider_args(providers: Sequence[Any] | None, provider_options: Sequence[dict] | None,
                                      available_provider_names: Sequence[str]) -> tuple[list[str], list[dict]]:
    """(provider names, one options dict per provider, keys and values as str), as onnxruntime normalizes
    `providers` (names or (name, options) pairs) and `provider_options`. ValueError for malformed
    arguments; a provider listed twice is dropped with a warning."""
    if providers is None:
        return [], []
    provider_name_to_options: dict[str, dict] = {}

    def set_options(name: Any, options: dict) -> None:
        if not isinstance(name, str):
            raise ValueError(f"provider name must be a str, not {name!r}")
        if name in provider_name_to_options:
            warnings.warn(f"Duplicate provider '{name}' encountered, ignoring.", UserWarning, stacklevel=3)
            return
        if name not in available_provider_names:
            warnings.warn(f"Specified provider '{name}' is not in available provider names. "
                          f"Available providers: '{', '.join(available_provider_names)}'", UserWarning, stacklevel=3)
        provider_name_to_options[name] = options

    if not isinstance(providers, (list, tuple)):
        raise ValueError("'providers' should be a sequence.")
    if provider_options is not None:
        if not isinstance(provider_options, (list, tuple)):
            raise ValueError("'provider_options' should be a sequence.")
        if len(providers) != len(provider_options):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
        if not all(isinstance(p, str) for p in providers):
            raise ValueError("Only string values for 'providers' are supported if 'provider_options' is given.")
        for name, options in zip(providers, provider_options):
            set_options(name, _provider_options(options, "'provider_options' values"))
    else:
        for provider in providers:
            if isinstance(provider, str):
                set_options(provider, {})
            elif isinstance(provider, (list, tuple)) and len(provider) == 2 and isinstance(provider[0], str):
                set_options(provider[0], _provider_options(provider[1], "provider options"))
            else:
                raise ValueError("'providers' values must be either strings or (string, dict) tuples.")
    return list(provider_name_to_options), list(provider_name_to_options.values())


def resolve(providers: Sequence[Any] | None, provider_options: Sequence[dict] | None) -> tuple[list[str], dict]:
    """The providers a session gets and their options: an unknown name is a RuntimeError, a known but
    unavailable one a warning (and the CPU runs it)."""
    if isinstance(providers, (list, tuple)):  # unknown names first: an error, not also a warning
        for p in providers:
            name = p[0] if isinstance(p, (list, tuple)) and p else p
            if isinstance(name, str) and name not in _ALL_PROVIDERS:
                raise RuntimeError(f"Unknown Provider Type: {name}")
    names, options = check_and_normalize_provider_args(providers, provider_options, _ALL_PROVIDERS)
    unavailable = [n for n in names if n != CPU]
    if unavailable:
        warnings.warn(f"sdx: {', '.join(unavailable)} {'is' if len(unavailable) == 1 else 'are'} not available in "
                      f"this build; running on {CPU} (get_available_providers() lists what is)", RuntimeWarning,
                      stacklevel=3)
    cpu_options = options[names.index(CPU)] if CPU in names else {}
    return [CPU], {CPU: dict(cpu_options)}
