// The attributes that mark a program's persistent state (paper section 3.1).
// The runtime reads them natively when it builds a class's persistent class map;
// nothing here is looked up through reflection at run time.
using System;

namespace SPersistence
{
	/// <summary>Instances of this class (and of classes derived from it) may be persisted.</summary>
	[AttributeUsage (AttributeTargets.Class, Inherited = true, AllowMultiple = false)]
	public sealed class SPersistentAttribute : Attribute
	{
	}

	/// <summary>This instance field is part of the persistent state of its object.</summary>
	[AttributeUsage (AttributeTargets.Field, Inherited = true, AllowMultiple = false)]
	public sealed class SPersistentFieldAttribute : Attribute
	{
	}

	/// <summary>
	/// This method, property setter or indexer setter updates persistent fields.
	/// In the annotating barrier mode only such methods get write barriers.
	/// </summary>
	[AttributeUsage (AttributeTargets.Method | AttributeTargets.Property | AttributeTargets.Constructor, Inherited = true, AllowMultiple = false)]
	public sealed class SPersistentUpdateAttribute : Attribute
	{
	}
}
